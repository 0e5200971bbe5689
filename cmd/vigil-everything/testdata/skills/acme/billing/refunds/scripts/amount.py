import sys

print(round(float(sys.argv[1]) * 0.95, 2))
