job "web" {
  group "frontend" {
    restart {
      interval = "5 minutes"
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
