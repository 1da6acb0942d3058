variable "replicas" {
  type    = number
  default = 0
  validation {
    condition     = var.replicas >= 1
    error_message = "At least one replica is needed."
  }
}

job "web" {
  group "frontend" {
    count = var.replicas
    task "nginx" {
      driver = "docker"
    }
  }
}
