job "web" {
  group "frontend" {
    spread {
      attribute = "${node.datacenter}"
      weight    = 150
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
