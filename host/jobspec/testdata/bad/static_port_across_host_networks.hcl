job "web" {
  group "frontend" {
    network {
      port "http" {
        static = 80
      }
      port "public" {
        static       = 80
        host_network = "public"
      }
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
