job "web" {
  meta {
    owner = upper("a", "b")
  }
  group "frontend" {
    task "nginx" {
      driver = "docker"
    }
  }
}
