job "web" {
  periodic {
    cron = "@daily"
  }

  group "frontend" {
    task "nginx" {
      driver = "docker"
    }
  }
}
