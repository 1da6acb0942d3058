job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
      config {
        image = file("missing.conf")
      }
    }
  }
}
