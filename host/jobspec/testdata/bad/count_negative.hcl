job "web" {
  group "frontend" {
    count = -1
    task "nginx" {
      driver = "docker"
    }
  }
}
