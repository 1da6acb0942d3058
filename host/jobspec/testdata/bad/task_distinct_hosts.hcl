job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
      constraint {
        distinct_hosts = true
      }
    }
  }
}
