# null leaves env's A out, but a list cannot hold null.
job "web" {
  datacenters = ["dc1", null]
  group "frontend" {
    task "nginx" {
      driver = "docker"
      env    = { A = null }
    }
  }
}
