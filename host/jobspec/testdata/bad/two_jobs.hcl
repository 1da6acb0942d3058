job "one" {
  group "g" {
    task "t" {
      driver = "exec"
    }
  }
}

job "two" {
  group "g" {
    task "t" {
      driver = "exec"
    }
  }
}
