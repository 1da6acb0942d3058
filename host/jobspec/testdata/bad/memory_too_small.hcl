job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
      resources {
        cpu    = 100
        memory = 5
      }
    }
  }
}
