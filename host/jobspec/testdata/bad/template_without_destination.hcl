job "web" {
  group "app" {
    task "server" {
      driver = "docker"
      template {
        data = "port = {{ env \"NOMAD_PORT_http\" }}"
      }
    }
  }
}
