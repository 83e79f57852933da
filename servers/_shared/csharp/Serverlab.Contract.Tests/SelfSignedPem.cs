using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Serverlab.Contract.Tests;

/// <summary>
/// A throw-away self-signed server certificate for 127.0.0.1, written as the PEM
/// certificate and key files the harness passes in TLS_CERT and TLS_KEY (an ECDSA
/// P-256 key, as loadtest/host/tls.py makes). The folder is deleted on dispose.
/// </summary>
internal sealed class SelfSignedPem : IDisposable
{
    private readonly string _folder = Directory.CreateTempSubdirectory("serverlab-tls-").FullName;

    public SelfSignedPem()
    {
        using ECDsa key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest("CN=localhost", key, HashAlgorithmName.SHA256);
        var names = new SubjectAlternativeNameBuilder();
        names.AddIpAddress(IPAddress.Loopback);
        names.AddDnsName("localhost");
        request.CertificateExtensions.Add(names.Build());
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(false, false, 0, true));
        using X509Certificate2 certificate =
            request.CreateSelfSigned(DateTimeOffset.UtcNow.AddMinutes(-5), DateTimeOffset.UtcNow.AddDays(1));
        Thumbprint = certificate.Thumbprint;
        File.WriteAllText(CertPath, certificate.ExportCertificatePem());
        File.WriteAllText(KeyPath, key.ExportPkcs8PrivateKeyPem());
    }

    public string CertPath => Path.Combine(_folder, "cert.pem");

    public string KeyPath => Path.Combine(_folder, "key.pem");

    /// <summary>The certificate's SHA-1 thumbprint: how a client recognises exactly this one.</summary>
    public string Thumbprint { get; }

    public void Dispose() => Directory.Delete(_folder, recursive: true);
}
