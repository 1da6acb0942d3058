job "web" {
  group "frontend" {
    scaling {
      min = 1
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
