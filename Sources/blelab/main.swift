print("blelab: not yet")
