job "web" {
  group "frontend" {
    count = 10
    spread {
      attribute = "${meta.rack}"
      target "r1" {
        percent = 70
      }
      target "r2" {
        percent = 50
      }
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
