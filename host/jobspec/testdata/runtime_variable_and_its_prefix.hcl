# One expression may use ${attr.driver.docker} and a longer path under it,
# ${attr.driver.docker.version}: each is kept as written, as Nomad keeps
# them (TestParse_RuntimeVariableWithItsPrefixInOneExpression).
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
