job "web" {
  group "frontend" {
    max_client_disconnect = "1h"
    disconnect {
      lost_after = "30m"
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
