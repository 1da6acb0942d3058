job "web" {
  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = 200
  }
  group "frontend" {
    task "nginx" {
      driver = "docker"
    }
  }
}
