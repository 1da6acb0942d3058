variable "image" {
  default = "nginx"
}
