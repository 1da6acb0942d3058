job "web" {
  group "frontend" {
    update {
      max_parallel = 1
    }
    update {
      max_parallel = 2
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
