job "db" {
  group "store" {
    volume "data" {
      type   = "csi"
      source = "pg-data"
    }
    task "postgres" {
      driver = "docker"
    }
  }
}
