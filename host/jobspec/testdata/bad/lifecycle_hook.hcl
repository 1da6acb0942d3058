job "web" {
  group "frontend" {
    task "init" {
      driver = "exec"
      lifecycle {
        hook = "before"
      }
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
