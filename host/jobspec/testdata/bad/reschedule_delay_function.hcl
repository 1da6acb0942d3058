job "web" {
  group "frontend" {
    reschedule {
      delay_function = "linear"
    }
    task "nginx" {
      driver = "docker"
    }
  }
}
