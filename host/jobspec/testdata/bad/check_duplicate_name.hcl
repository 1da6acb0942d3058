job "web" {
  group "app" {
    network {
      port "http" {}
    }
    task "server" {
      driver = "docker"
      service {
        name = "web"
        port = "http"
        check {
          name     = "alive"
          type     = "tcp"
          interval = "10s"
          timeout  = "2s"
        }
        check {
          name     = "alive"
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "2s"
        }
      }
    }
  }
}
