# A typo in a dynamic block's content is reported once, not once per copy.
job "multi" {
  dynamic "group" {
    for_each = ["a", "b", "c"]
    labels   = ["g-${group.value}"]
    content {
      task "t" {
        driver = "exec"
        env {
          REGION = group.nope
        }
      }
    }
  }
}
