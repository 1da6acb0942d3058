job "web" {
  constraint {
    attribute = "${attr.kernel.name}"
    operator  = "~="
    value     = "linux"
  }
  group "frontend" {
    task "nginx" {
      driver = "docker"
    }
  }
}
