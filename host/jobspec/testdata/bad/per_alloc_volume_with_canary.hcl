job "db" {
  update {
    canary = 1
  }
  group "store" {
    volume "data" {
      type      = "host"
      source    = "pg-data"
      per_alloc = true
    }
    task "postgres" {
      driver = "docker"
    }
  }
}
