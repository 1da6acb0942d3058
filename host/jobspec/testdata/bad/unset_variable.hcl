variable "replicas" {
  type = number
}

job "web" {
  group "frontend" {
    count = var.replicas
    task "nginx" {
      driver = "docker"
    }
  }
}
