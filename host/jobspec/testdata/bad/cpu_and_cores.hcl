job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
      resources {
        cpu   = 500
        cores = 2
      }
    }
  }
}
