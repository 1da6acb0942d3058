job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
    }
}
