job "web" {
  colour = "red"
  group "frontend" {
    task "nginx" {
      driver = "docker"
    }
  }
}
