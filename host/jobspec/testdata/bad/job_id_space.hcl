job "my web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
    }
  }
}
