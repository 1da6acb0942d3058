job "web" {
  group "frontend" {
    constraint {
      attribute = "${meta.rack}"
      regexp    = "r[0-3"
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
