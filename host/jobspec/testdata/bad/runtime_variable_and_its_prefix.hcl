# One expression cannot keep both ${attr.driver.docker} and a longer path
# under it as written; separate expressions can.
job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
      config {
        image = "nginx"
        args  = ["${attr.driver.docker}", "${attr.driver.docker.version}"]
      }
      env {
        BOTH    = "${attr.driver.docker.version}/${attr.driver.docker}"
        DOCKER  = "${attr.driver.docker}"
        VERSION = "${attr.driver.docker.version}"
      }
    }
  }
}
