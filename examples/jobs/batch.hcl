# A batch job: five report workers on amd64 nodes that run to completion.
job "reports" {
  datacenters = ["*"]
  type        = "batch"

  constraint {
    attribute = "${attr.cpu.arch}"
    operator  = "="
    value     = "amd64"
  }

  group "render" {
    count = 5

    task "render" {
      driver = "raw_exec"

      config {
        command = "/usr/local/bin/render-reports"
        args    = ["--since", "24h"]
      }

      resources {
        cpu    = 1000
        memory = 512
      }
    }
  }
}
