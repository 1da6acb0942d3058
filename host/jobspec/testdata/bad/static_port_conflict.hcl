job "web" {
  group "frontend" {
    network {
      port "http" {
        static = 80
      }
      port "alt" {
        static = 80
      }
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
