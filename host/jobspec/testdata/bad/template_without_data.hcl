job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
      template {
        destination = "local/nginx.conf"
      }
    }
  }
}
