# A job that mounts the volume "data": placed only on a node where the
# hostpath plugin runs healthy, and, as the volume is single-node-writer,
# by one allocation at a time.
job "app" {
  group "db" {
    count = 1

    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "redis" {
      driver = "docker"

      config {
        image = "redis:7"
        args  = ["--dir", "/data"]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }

      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}
