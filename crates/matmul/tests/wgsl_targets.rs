//! Every WGSL shader this project ships — the registry's `wgpu-*` kernels (every dtype they take:
//! f32, u32, and f16 and bf16 read as words; at their registry tiles and the puzzles' TILE 3) and the own-kernel examples (examples/kernels/*.wgsl,
//! with the declarations matmul appends) — parsed and validated by naga and translated to MSL
//! (Metal) and HLSL (DX12), the two backends this machine cannot run; the cooperative-matrix
//! kernel (f16) validated with that capability and written as SPIR-V. The same naga version as
//! wgpu's, so a shader that passes here is one wgpu would hand to those drivers; whether the
//! drivers then compile and run it is only known where they exist (docs/wgpu.md).

use matmul::registry::{wgsl, WgslShape, KERNELS};
use matmul::{DType, RunOptions};

/// naga's module of `text` parsed and validated with `caps`; the error names `what`.
fn validate(
    what: &str,
    text: &str,
    caps: naga::valid::Capabilities,
) -> Result<(naga::Module, naga::valid::ModuleInfo), String> {
    let module = naga::front::wgsl::parse_str(text)
        .map_err(|e| format!("{what}: WGSL: {}", e.emit_to_string(text)))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| format!("{what}: validation: {}", e.emit_to_string(text)))?;
    Ok((module, info))
}

/// naga's module of `text` validated, then written as MSL and HLSL; the error names `what`. The
/// capability of `unpack2x16float` (the scalar kernels' f16 loads) is core WebGPU, which wgpu
/// grants on Vulkan, Metal and DX12.
fn translate(what: &str, text: &str) -> Result<(String, String), String> {
    let caps = naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    let (module, info) = validate(what, text, caps)?;
    let pipeline = naga::back::msl::PipelineOptions::default();
    let (msl, _) = naga::back::msl::write_string(
        &module,
        &info,
        &naga::back::msl::Options::default(),
        &pipeline,
    )
    .map_err(|e| format!("{what}: MSL: {e}"))?;
    let mut hlsl = String::new();
    let options = naga::back::hlsl::Options::default();
    let pipeline = naga::back::hlsl::PipelineOptions::default();
    let mut writer = naga::back::hlsl::Writer::new(&mut hlsl, &options, &pipeline);
    writer
        .write(&module, &info, None)
        .map_err(|e| format!("{what}: HLSL: {e}"))?;
    Ok((msl, hlsl))
}

#[test]
fn every_wgsl_shader_translates_to_msl_and_hlsl() {
    let mut done = Vec::new();
    let mut coop = Vec::new();
    let mut failures = Vec::new();
    for kernel in KERNELS.iter() {
        let Some(src) = kernel.wgsl_source() else {
            continue;
        };
        let registry_tile = kernel.tile(&RunOptions::default());
        let tiles: Vec<u32> = match registry_tile {
            Some(t) => vec![t, 3],
            None => vec![0],
        };
        if let WgslShape::CoopMat { .. } = src.shape {
            // Cooperative matrices: validated with the capability (wgpu translates them for
            // Vulkan, and for Metal at 8×8 only), and written as SPIR-V, what the Vulkan
            // adapters that offer them take.
            // Every pipeline variant: each staging of op(A) and op(B).
            let caps = naga::valid::Capabilities::COOPERATIVE_MATRIX
                | naga::valid::Capabilities::SHADER_FLOAT16
                | naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
            for sa in wgsl::Staging::ALL {
                for sb in wgsl::Staging::ALL {
                    let what = format!("{} f16 {sa:?}/{sb:?}", kernel.name);
                    let text = wgsl::text_for(src, DType::F16, 0, Some((sa, sb)));
                    match validate(&what, &text, caps).and_then(|(m, i)| {
                        naga::back::spv::write_vec(&m, &i, &Default::default(), None)
                            .map_err(|e| format!("{what}: SPIR-V: {e}"))
                    }) {
                        Ok(words) => {
                            assert!(words.len() > 100, "{what}: {} SPIR-V words", words.len());
                            coop.push(what);
                        }
                        Err(e) => failures.push(e),
                    }
                }
            }
            continue;
        }
        for &dtype in kernel.dtypes {
            for &tile in &tiles {
                let what = format!("{} {dtype} tile {tile}", kernel.name);
                match translate(&what, &wgsl::text(src, dtype, tile)) {
                    Ok((msl, hlsl)) => {
                        assert!(msl.contains("kernel void"), "{what}: no MSL kernel");
                        assert!(hlsl.contains("[numthreads("), "{what}: no HLSL entry");
                        done.push(what);
                    }
                    Err(e) => failures.push(e),
                }
            }
        }
    }
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/kernels");
    for entry in std::fs::read_dir(examples).expect("examples/kernels") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "wgsl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a readable example");
        // The defines its "Run:" comment passes (`-D NAME=VALUE`), as matmul appends them.
        let defines: String = text
            .lines()
            .take_while(|l| l.starts_with("//"))
            .flat_map(|l| {
                l.split_whitespace()
                    .collect::<Vec<_>>()
                    .windows(2)
                    .filter(|w| w[0] == "-D")
                    .map(|w| w[1].to_string())
                    .collect::<Vec<_>>()
            })
            .filter_map(|d| {
                d.split_once('=')
                    .map(|(k, v)| format!("const {k} = {v};\n"))
            })
            .collect();
        for ty in ["f32", "u32"] {
            let what = format!("{} {ty}", path.display());
            let full = format!("{text}\nalias T = {ty};\n{defines}{}", wgsl::PARAMS);
            match translate(&what, &full) {
                Ok(_) => done.push(what),
                Err(e) => failures.push(e),
            }
        }
    }
    println!(
        "RESULT {} shader builds translated to MSL and HLSL; {} cooperative-matrix build(s) \
         validated and written as SPIR-V",
        done.len(),
        coop.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(coop.len(), 9, "{coop:?}");
    // 5 registry kernels × 2 dtypes (× 2 tiles for the tiled ones) and 2 examples × 2.
    assert!(
        done.len() >= 14,
        "only {} shader builds: {done:?}",
        done.len()
    );
}
