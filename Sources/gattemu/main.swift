print("gattemu")
