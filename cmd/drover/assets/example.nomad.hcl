# An example Drover job, written by `drover job init`. Drover reads Nomad's
# job language: this file also runs on Nomad (Drover's `scheduler` line
# aside). Try it with
#
#   drover job plan example.nomad.hcl    # what would happen
#   drover job run example.nomad.hcl     # run it
#   drover job status example

# Variables can be set with -var image=..., -var-file, or NOMAD_VAR_image.
variable "image" {
  type        = string
  default     = "redis:7"
  description = "The container image to run."
}

job "example" {
  # Service jobs run until stopped; batch jobs run to completion; system
  # jobs run one allocation on every node.
  type = "service"

  # The datacenters to run in ("*" is every one) and the node pool.
  datacenters = ["*"]
  node_pool   = "default"

  # Drover's addition: the scheduler plugin that places this job. Leave it
  # out to use the built-in scheduler for the job's type.
  # scheduler = "service"

  # Only Linux nodes.
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  # Roll updates out one allocation at a time, checking health.
  update {
    max_parallel     = 1
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  group "cache" {
    count = 1

    # Prefer spreading allocations over racks.
    spread {
      attribute = "${meta.rack}"
      weight    = 50
    }

    network {
      port "db" {
        to = 6379
      }
    }

    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    ephemeral_disk {
      size = 300
    }

    task "redis" {
      driver = "docker"

      config {
        image = var.image
        ports = ["db"]
      }

      resources {
        cpu    = 500 # MHz
        memory = 256 # MB
      }
    }
  }
}
