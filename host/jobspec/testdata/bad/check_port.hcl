job "web" {
  group "app" {
    network {
      port "http" {}
    }
    task "server" {
      driver = "docker"
      service {
        name = "web"
        port = "htp"
      }
      service {
        name = "admin"
        port = "http"
        check {
          type     = "tcp"
          port     = "admin"
          interval = "10s"
          timeout  = "2s"
        }
        check {
          name     = "direct"
          type     = "tcp"
          port     = "8080"
          interval = "10s"
          timeout  = "2s"
        }
      }
    }
  }
}
