job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
    }
  }
  group "frontend" {
    task "haproxy" {
      driver = "docker"
    }
  }
}
