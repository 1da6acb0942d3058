# A service job: three web servers on Linux nodes, spread over both dev
# datacenters.
job "web" {
  datacenters = ["dc1", "dc2"]
  type        = "service"
  priority    = 60

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  meta {
    team = "frontend"
  }

  spread {
    attribute = "${node.datacenter}"
  }

  group "frontend" {
    count = 3

    task "nginx" {
      driver = "docker"

      config {
        image = "nginx:1.27"
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
