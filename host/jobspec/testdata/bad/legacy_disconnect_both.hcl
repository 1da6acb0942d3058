# Nomad's two legacy disconnect settings conflict: one error, where they
# are written, not a second one about the disconnect block made of them.
job "web" {
  group "frontend" {
    max_client_disconnect        = "1h"
    stop_after_client_disconnect = "30m"
    task "nginx" {
      driver = "docker"
    }
  }
}
