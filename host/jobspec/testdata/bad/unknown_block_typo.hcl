job "web" {
  grop "frontend" {
    task "nginx" {
      driver = "docker"
    }
  }
}
