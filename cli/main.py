def main(argv=None):
    print("mailtriage")
    return 0
