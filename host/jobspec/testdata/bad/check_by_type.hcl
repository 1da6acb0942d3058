job "web" {
  group "app" {
    network {
      port "http" {}
    }
    service {
      name = "api"
      port = "http"
      check {
        type = "http"
        path = "/health"
      }
    }
    task "server" {
      driver = "docker"
      service {
        name = "web"
        check {
          type     = "tcp"
          interval = "10s"
          timeout  = "2s"
        }
        check {
          name     = "script"
          type     = "script"
          interval = "10s"
          timeout  = "2s"
        }
        check {
          name     = "ping"
          type     = "icmp"
          interval = "10s"
          timeout  = "2s"
        }
      }
    }
  }
}
