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

    network {
      port "http" {
        to = 80
      }
    }

    # Registered in Drover's service catalogue while each allocation runs
    # (drover service info web).
    service {
      name     = "web"
      port     = "http"
      provider = "nomad"
      tags     = ["frontend", "${node.datacenter}"]
    }

    task "nginx" {
      driver = "docker"

      config {
        image = "nginx:1.27"
        ports = ["http"]
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
