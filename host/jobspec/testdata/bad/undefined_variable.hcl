variable "image" {
  default = "nginx"
}

job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
      config {
        image = var.imgae
      }
    }
  }
}
