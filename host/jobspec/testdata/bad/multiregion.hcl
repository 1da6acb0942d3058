job "web" {
  multiregion {
    strategy {
      max_parallel = 1
    }
    region "east" {
      count       = 2
      datacenters = ["east-1"]
    }
  }
  group "frontend" {
    task "nginx" {
      driver = "docker"
    }
  }
}
