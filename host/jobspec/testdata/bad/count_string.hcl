job "web" {
  group "frontend" {
    count = "three"
    task "nginx" {
      driver = "docker"
    }
  }
}
