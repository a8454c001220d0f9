# Sourced by the device scripts: install the wheels carried in .whl/ (see the device tool's notes)
# into /tmp/site and point Python and the CUTLASS headers at them; then $inc is the include folder.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD && export THREADMAP_CUTLASS_INCLUDE=/tmp/site/cutlass_library/source/include
fi
inc=${THREADMAP_CUTLASS_INCLUDE:-$(python3 -c "import cutlass_library,os;print(os.path.join(os.path.dirname(cutlass_library.__file__),'source','include'))")}
