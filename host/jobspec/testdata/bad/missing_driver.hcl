job "web" {
  group "frontend" {
    task "nginx" {
      config {
        image = "nginx"
      }
    }
  }
}
