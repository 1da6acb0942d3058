job "db" {
  group "store" {
    volume "data" {
      type   = "host"
      source = "pg-data"
    }
    task "postgres" {
      driver = "docker"
      volume_mount {
        volume      = "date"
        destination = "/var/lib/postgresql"
      }
    }
  }
}
